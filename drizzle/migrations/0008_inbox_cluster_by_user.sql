-- One statement: InnoDB refuses to drop the primary key while the AUTO_INCREMENT column leads no other index.
ALTER TABLE `notice_inbox_items` ADD INDEX `idx_nii_id` (`id`), DROP PRIMARY KEY, ADD PRIMARY KEY (`app_code`, `user_id`, `id`), DROP INDEX `idx_nii_user`;
