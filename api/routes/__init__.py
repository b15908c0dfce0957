"""The API's resources, one router per module; `api.site` mounts them."""
