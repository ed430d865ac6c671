-- Created once when the MySQL volume is new. notice-service's migrate job creates its own tables;
-- the owner outbox tables come from `migrate --owner-fixtures` (dev only).
CREATE DATABASE IF NOT EXISTS hyapp_notice CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS hyapp_wallet CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS hyapp_room CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'hyapp'@'%' IDENTIFIED BY 'hyapp';
GRANT ALL PRIVILEGES ON hyapp_notice.* TO 'hyapp'@'%';
-- notice-service only reads the owners' outboxes; the demo writer (dev only) needs INSERT as well.
GRANT SELECT, INSERT, CREATE ON hyapp_wallet.* TO 'hyapp'@'%';
GRANT SELECT, INSERT, CREATE ON hyapp_room.* TO 'hyapp'@'%';
