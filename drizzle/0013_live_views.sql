CREATE TABLE `live_views` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`session_hash` text NOT NULL,
	`episode_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`ended_at` integer
);
--> statement-breakpoint
CREATE INDEX `live_views_episode_idx` ON `live_views` (`episode_id`);