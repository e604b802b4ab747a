from django.apps import AppConfig


class FrontendConfig(AppConfig):
    name = "frontend"
    verbose_name = "Frontend"

    def ready(self):
        """The admin's sign-in is throttled like the pages' (frontend/throttle.py). Set here, not in
        config/urls.py, so that nothing imports the frontend app."""
        from django.contrib import admin

        from frontend.throttle import AdminSignInForm

        admin.site.login_form = AdminSignInForm
