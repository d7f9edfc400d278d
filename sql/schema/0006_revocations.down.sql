DROP TABLE IF EXISTS im_user_token_cutoffs;
DROP TABLE IF EXISTS im_revoked_tokens;
