DROP INDEX `runs_owner_idx`;--> statement-breakpoint
CREATE INDEX `runs_created_idx` ON `runs` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `runs_owner_idx` ON `runs` (`owner_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `principals` ADD `revoked_at` integer;