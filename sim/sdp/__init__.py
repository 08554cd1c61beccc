"""SDP and SDP_RDMA: the single-point data processor."""
