ALTER TABLE `notice_rejected_messages` ADD `body_bytes` int DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `notice_rejected_messages` ADD `body_sha256` binary(32);--> statement-breakpoint
UPDATE `notice_rejected_messages` SET `body_bytes` = COALESCE(LENGTH(`raw_body`), 0), `body_sha256` = UNHEX(SHA2(`raw_body`, 256)) WHERE `raw_body` IS NOT NULL;