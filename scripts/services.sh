#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on 127.0.0.1 (used by `make test`);
# installs and starts them when they do not.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { (exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'PING\r\n' >&3 && head -c 5 <&3 | grep -q PONG) 2>/dev/null; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$1 is not running on 127.0.0.1 and I am not root: start it, then run make test again." >&2
    exit 1
  fi
}

if ! pg_up; then
  need_root PostgreSQL
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "Installing PostgreSQL"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "Starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL did not come up" >&2; exit 1; }
fi
# The test runner connects as the current user; create that role when it is missing.
if ! psql -h 127.0.0.1 -U "$(id -un)" -d postgres -Atc 'select 1' >/dev/null 2>&1; then
  need_root "A PostgreSQL role for $(id -un)"
  su postgres -c "psql -q -c \"CREATE ROLE \\\"$(id -un)\\\" SUPERUSER LOGIN\"" || true
  grep -q '^host all all 127.0.0.1/32 trust' /etc/postgresql/*/main/pg_hba.conf || {
    sed -i '1i host all all 127.0.0.1/32 trust' /etc/postgresql/*/main/pg_hba.conf
    su postgres -c "psql -q -c 'select pg_reload_conf()'" >/dev/null
  }
fi

if ! redis_up; then
  need_root Redis
  command -v redis-server >/dev/null || {
    echo "Installing Redis"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  }
  echo "Starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/redline-test.log
  for _ in $(seq 1 20); do redis_up && break; sleep 0.5; done
  redis_up || { echo "Redis did not come up" >&2; exit 1; }
fi
echo "PostgreSQL and Redis are up."
