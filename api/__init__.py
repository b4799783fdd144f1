"""The HTTP service: a FastAPI app over :class:`lineage.service.core.Service` (``api.app:create_app``)."""

from lineage.service import schemas as _schemas

_schemas.build_all()  # before any router declares a route over them (see build_all)
