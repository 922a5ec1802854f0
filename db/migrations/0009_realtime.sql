CREATE TABLE "realtime_payloads" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "realtime_payloads_created_idx" ON "realtime_payloads" USING btree ("created_at");
