ALTER TABLE "users" ADD COLUMN "email_verified_at" timestamp with time zone;--> statement-breakpoint
CREATE TABLE "email_verifications" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
	"email" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);--> statement-breakpoint
CREATE INDEX "email_verifications_user_idx" ON "email_verifications" ("user_id");--> statement-breakpoint
CREATE TABLE "magic_links" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"user_id" text REFERENCES "users"("id") ON DELETE CASCADE,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);--> statement-breakpoint
CREATE INDEX "magic_links_email_idx" ON "magic_links" (lower("email"));--> statement-breakpoint
CREATE INDEX "magic_links_user_idx" ON "magic_links" ("user_id");--> statement-breakpoint
CREATE TABLE "social_accounts" (
	"issuer" text NOT NULL,
	"subject" text NOT NULL,
	"user_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
	"email" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "social_accounts_pk" PRIMARY KEY ("issuer", "subject")
);--> statement-breakpoint
CREATE INDEX "social_accounts_user_idx" ON "social_accounts" ("user_id");--> statement-breakpoint
CREATE TABLE "social_sign_in_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"issuer" text NOT NULL,
	"verifier_sealed" text NOT NULL,
	"nonce" text NOT NULL,
	"link_user_id" text REFERENCES "users"("id") ON DELETE CASCADE,
	"return_to" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);--> statement-breakpoint
CREATE INDEX "social_sign_in_states_link_user_idx" ON "social_sign_in_states" ("link_user_id");
