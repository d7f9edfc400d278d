package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

func (b S3Bucket) validate(section string) error {
	if b.Bucket == "" || b.Region == "" || b.AccessKey == "" || b.SecretKey == "" {
		return fmt.Errorf("%s.s3 bucket, region, access_key and secret_key are required with store s3", section)
	}
	return nil
}

// validateStore checks the uploads store's own keys; the sizes are checked with the rest.
func (u Uploads) validateStore() error {
	switch u.Store {
	case "fs":
		return nil
	case "s3":
		return u.S3.validate("uploads")
	}
	return errors.New("uploads.store must be fs or s3")
}

// URLSecret signs the fs store's URLs: the configured secret, else one derived from the
// token secret, so a dev setup needs no extra key.
func (c Config) URLSecret() []byte {
	if c.Uploads.Secret != "" {
		return []byte(c.Uploads.Secret)
	}
	m := hmac.New(sha256.New, []byte(c.TokenSecret))
	m.Write([]byte("imd uploads"))
	return m.Sum(nil)
}

// UploadsBaseURL is where the fs store's files are served: base_url, else the HTTP listener.
func (c Config) UploadsBaseURL() string {
	if c.Uploads.BaseURL != "" {
		return c.Uploads.BaseURL
	}
	return "http://" + c.HTTP.Addr
}
