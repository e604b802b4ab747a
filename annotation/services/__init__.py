"""Every write to Redline's data goes through a function in this package.

Services are keyword-only, typed, transactional, and validate before saving.
Views, commands, tasks and the admin call them; they never write models directly.
"""
