"""Convolution pipeline: CDMA, CSC, CMAC, CACC."""
