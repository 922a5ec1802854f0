CREATE TABLE "proxies" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"credentials_sealed" text,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "proxies" ADD CONSTRAINT "proxies_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "proxies_org_idx" ON "proxies" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "proxies_org_default_uq" ON "proxies" USING btree ("org_id") WHERE is_default;
