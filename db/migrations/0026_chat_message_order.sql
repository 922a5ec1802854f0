-- A session's messages are read in the order they were appended. Their ids start with the
-- millisecond, and several messages of one turn are appended within one: ordering by id put a
-- tool answer before the assistant message that called it. `seq` is drawn in insertion order.
CREATE SEQUENCE "chat_messages_seq";--> statement-breakpoint
ALTER TABLE "chat_messages" ADD COLUMN "seq" bigint;--> statement-breakpoint
UPDATE "chat_messages" SET "seq" = o.n FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM "chat_messages") o WHERE o.id = "chat_messages".id;--> statement-breakpoint
SELECT setval('chat_messages_seq', COALESCE((SELECT max("seq") FROM "chat_messages"), 0) + 1, false);--> statement-breakpoint
ALTER TABLE "chat_messages" ALTER COLUMN "seq" SET DEFAULT nextval('chat_messages_seq');--> statement-breakpoint
ALTER TABLE "chat_messages" ALTER COLUMN "seq" SET NOT NULL;--> statement-breakpoint
ALTER SEQUENCE "chat_messages_seq" OWNED BY "chat_messages"."seq";--> statement-breakpoint
DROP INDEX "chat_messages_session_idx";--> statement-breakpoint
CREATE INDEX "chat_messages_session_idx" ON "chat_messages" USING btree ("session_id","seq");
