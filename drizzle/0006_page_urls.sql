ALTER TABLE `tool_calls` ADD `shown_urls` text;--> statement-breakpoint
ALTER TABLE `tool_calls` ADD `own_urls` text;