"""Request and response bodies (pydantic), one module per resource."""
