"""The API's routers, one module per area; ``assessors.serving.app.create_app`` mounts them."""
