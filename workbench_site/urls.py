from django.contrib import admin
from django.urls import path

from workbench_site import health

admin.site.site_header = "Workbench administration"
admin.site.site_title = "Workbench"
admin.site.index_title = "Tenants, keys and toolboxes"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]
