"""Kafka record layouts as data and the byte-level readers they drive."""
