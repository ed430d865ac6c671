#!/bin/bash
# Runs once, when the MySQL volume is new (`docker compose down -v` to run it again): the databases and the user
# every notice-service service connects as, with the password compose passes as NOTICE_MYSQL_PASSWORD (the same
# variable configs/docker.yaml reads, so the two cannot disagree). notice-service's migrate job creates its own
# tables; the owner outbox tables come from `migrate --owner-fixtures` (dev only).
set -euo pipefail
password="${NOTICE_MYSQL_PASSWORD:-hyapp}"
prefix="${NOTICE_DB_PREFIX:-hyapp}"
user="${NOTICE_DB_USER:-hyapp}"
# As an SQL string literal: backslashes and single quotes doubled.
literal=$(printf '%s' "$password" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")
# shellcheck disable=SC2086  # MYSQL_CLIENT_ARGS is a list of options
"${MYSQL_CLIENT:-mysql}" --protocol=socket -uroot ${MYSQL_ROOT_PASSWORD:+"-p$MYSQL_ROOT_PASSWORD"} ${MYSQL_CLIENT_ARGS:-} <<SQL
CREATE DATABASE IF NOT EXISTS ${prefix}_notice CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS ${prefix}_wallet CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS ${prefix}_room CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS ${prefix}_activity CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS '${user}'@'%' IDENTIFIED BY '${literal}';
ALTER USER '${user}'@'%' IDENTIFIED BY '${literal}';
GRANT ALL PRIVILEGES ON ${prefix}_notice.* TO '${user}'@'%';
-- notice-service only reads the owners' outboxes; the demo writer (dev only) needs INSERT as well.
GRANT SELECT, INSERT, CREATE ON ${prefix}_wallet.* TO '${user}'@'%';
GRANT SELECT, INSERT, CREATE ON ${prefix}_room.* TO '${user}'@'%';
GRANT SELECT, INSERT, CREATE ON ${prefix}_activity.* TO '${user}'@'%';
SQL
echo "[mysql-init] databases ${prefix}_notice, ${prefix}_wallet, ${prefix}_room, ${prefix}_activity and user ${user} ready"
