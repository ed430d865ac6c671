ALTER TABLE `notice_delivery_events` MODIFY COLUMN `app_code` varbinary(128) NOT NULL, MODIFY COLUMN `source_event_id` varbinary(764) NOT NULL, MODIFY COLUMN `user_id` varbinary(256) NOT NULL;
