from django.urls import path

from connections import views

urlpatterns = [
    path("connect/<str:token>/", views.connect, name="connections_connect"),
    path("callback/", views.callback, name="connections_callback"),
    path("client.json", views.client_metadata, name="connections_client_metadata"),
]
