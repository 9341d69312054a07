-- A grant use is charged only while the grant is live: not exhausted, not revoked, not expired.
-- The same batch then increments `uses`; D1 runs batches one at a time, so concurrent calls can
-- never charge more uses than `max_uses`. The grant_uses primary key (tool_call_id) makes a
-- second charge for one call impossible.
CREATE TRIGGER `grant_uses_require_live_grant`
BEFORE INSERT ON `grant_uses`
WHEN (SELECT uses >= max_uses OR revoked_at IS NOT NULL OR expires_at <= NEW.charged_at FROM grants WHERE id = NEW.grant_id) IS NOT 0
BEGIN
  SELECT RAISE(ABORT, 'guard:grant_exhausted');
END;
