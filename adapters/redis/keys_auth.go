package redis

// Keys of the token deny-list (issue 6). They expire with the tokens they deny.

// RevokedToken marks one token, by jti, as revoked.
func (k Keys) RevokedToken(tokenID string) string { return k.prefix + "auth:revoked:" + tokenID }

// RevokedUser holds the Unix ms before which every token of the user is revoked.
func (k Keys) RevokedUser(user int64) string { return k.prefix + "auth:revoked_user:" + itoa(user) }
