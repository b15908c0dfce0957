"""The calls app's own pages outside the admin: the approval page, at the one path
`kernel.approvals.PAGE_PATH` names."""

from django.urls import path

from calls import views
from kernel.approvals import PAGE_PATH

urlpatterns = [
    path(
        PAGE_PATH.lstrip("/").replace("{public_id}", "<str:public_id>"),
        views.approval_page,
        name="approval",
    ),
]
