"""PostgreSQL beside the storage: schema, connections, errors, migrations and roles.

tables.py (the SQLAlchemy Core tables: the schema in Python), engine.py (URLs, the
storage's pool, SQLAlchemy engines for migrations and admin code), pool.py (that pool:
asyncpg connections lent first come, first served), errors.py
(driver errors to ctxstore errors, in one place), migrations.py (running Alembic),
roles.py (least-privilege roles), admin.py (databases and roles for the demo and tests),
distribute.py (Citus).
"""
