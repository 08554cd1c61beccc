"""PDP and PDP_RDMA: the planar data processor (pooling)."""
