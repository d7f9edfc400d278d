package config

import (
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
