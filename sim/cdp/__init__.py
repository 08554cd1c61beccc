"""CDP and CDP_RDMA: the channel data processor (LRN)."""
