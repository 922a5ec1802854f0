ALTER TABLE "invitations" ADD COLUMN "delivery" text DEFAULT 'disabled' NOT NULL;--> statement-breakpoint
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_delivery_check" CHECK ("delivery" IN ('sending', 'sent', 'failed', 'disabled'));
