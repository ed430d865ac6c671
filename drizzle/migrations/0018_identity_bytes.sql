ALTER TABLE `notice_preferences` MODIFY COLUMN `app_code` varbinary(128) NOT NULL;--> statement-breakpoint
ALTER TABLE `notice_quiet_hours` MODIFY COLUMN `app_code` varbinary(128) NOT NULL;--> statement-breakpoint
ALTER TABLE `notice_rejected_messages` MODIFY COLUMN `message_id` varbinary(128) NOT NULL;