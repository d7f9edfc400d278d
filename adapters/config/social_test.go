package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSocialSettings(t *testing.T) {
	path := writeConfig(t, validYAML)
	cfg, err := Load(path, []string{
		"IMD_MESSAGE_SYSTEM_ACCOUNTS=9, 10", "IMD_TENANT_REGISTRY_DATABASE=reg_x", "IMD_UPLOADS_MAX_SIZE=1024",
		"IMD_UPLOADS_THUMBNAILS_WORKERS=3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Message.SystemAccounts, []int64{9, 10}) || cfg.Registry.Database != "reg_x" ||
		cfg.Registry.RefreshInterval != 30*time.Second || cfg.Uploads.MaxSize != 1024 || cfg.Uploads.Dir == "" ||
		cfg.Uploads.Thumbnails != (Thumbnails{Side: 320, MaxBytes: 25 << 20, MaxPixels: 40_000_000, Workers: 3}) {
		t.Fatalf("social settings = %+v %+v %+v", cfg.Message.SystemAccounts, cfg.Registry, cfg.Uploads)
	}

	tests := []struct {
		name string
		env  string
		want string
	}{
		{"system account id not a number", "IMD_MESSAGE_SYSTEM_ACCOUNTS=9,x", "IMD_MESSAGE_SYSTEM_ACCOUNTS"},
		{"system account id not positive", "IMD_MESSAGE_SYSTEM_ACCOUNTS=0", "system_accounts"},
		{"no registry database", "IMD_TENANT_REGISTRY_DATABASE=", "tenant_registry"},
		{"a tenant on the registry's database", "IMD_TENANT_REGISTRY_DATABASE=imd_default", "registry's database"},
		{"no upload size", "IMD_UPLOADS_MAX_SIZE=0", "uploads"},
		{"no thumbnail pixels", "IMD_UPLOADS_THUMBNAILS_MAX_PIXELS=0", "uploads.thumbnails"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(path, []string{tt.env})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load with %s: err = %v, want one naming %q", tt.env, err, tt.want)
			}
		})
	}
}
