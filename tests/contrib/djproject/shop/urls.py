from __future__ import annotations

from django.urls import path

from .views import enqueue

urlpatterns = [path("enqueue/<int:n>", enqueue)]
