"""The HTTP service: a FastAPI app over :class:`lineage.service.core.Service` (``api.app:create_app``)."""
