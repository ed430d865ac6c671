-- The provider's reference (Tencent MsgKey, inbox item id, push TaskId, a push-sending: mark) under a name no provider owns.
ALTER TABLE `notice_delivery_events` RENAME COLUMN `im_msg_key` TO `provider_ref`;
