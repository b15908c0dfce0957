"""Exit 0 when the PostgreSQL URL given as argument accepts a connection (used by make test)."""

import sys

import environ


def reachable(url: str) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    config = environ.Env.db_url_config(url)
    try:
        psycopg.connect(
            host=config.get("HOST") or None,
            port=config.get("PORT") or None,
            user=config.get("USER") or None,
            password=config.get("PASSWORD") or None,
            dbname=config.get("NAME") or "postgres",
            connect_timeout=3,
        ).close()
    except psycopg.Error:
        return False
    return True


if __name__ == "__main__":
    sys.exit(0 if reachable(sys.argv[1]) else 1)
