package config

import (
	"strings"
	"testing"
)

func TestListener(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:9000", false, true},
		{"127.0.0.2:9000", false, true},
		{"[::1]:9000", false, true},
		{"localhost:9000", false, true},
		{"unix:/run/imd/tcp.sock", false, true},
		{"0.0.0.0:9000", false, false},
		{":9000", false, false},
		{"[::]:9000", false, false},
		{"192.168.1.10:9000", false, false},
		{"imd.example.com:9000", false, false},
		{"[::ffff:127.0.0.1]:9000", false, true},
		{"0.0.0.0:9000", true, true},
		{":9000", true, true},
		{"192.168.1.10:9000", true, true},
		{"no-port", true, false},
	}
	for _, tt := range tests {
		err := Listener("tcp", tt.addr, tt.public)
		if (err == nil) != tt.ok {
			t.Errorf("Listener(%q, public %v) = %v, want ok %v", tt.addr, tt.public, err, tt.ok)
		}
	}
}

// The config refuses a public listener unless its section says so, naming the key to set.
func TestLoadRefusesPublicListenersUnlessAllowed(t *testing.T) {
	path := writeConfig(t, validYAML)
	for _, section := range []string{"TCP", "HTTP"} {
		_, err := Load(path, []string{"IMD_" + section + "_ADDR=0.0.0.0:9000"})
		if err == nil || !strings.Contains(err.Error(), "IMD_"+section+"_PUBLIC=true") {
			t.Errorf("%s on 0.0.0.0: %v; want a refusal naming IMD_%s_PUBLIC", section, err, section)
		}
		cfg, err := Load(path, []string{"IMD_" + section + "_ADDR=0.0.0.0:9000", "IMD_" + section + "_PUBLIC=true"})
		if err != nil {
			t.Errorf("%s on 0.0.0.0 with public: %v", section, err)
			continue
		}
		if section == "TCP" && (!cfg.TCP.Public || cfg.TCP.Addr != "0.0.0.0:9000") || section == "HTTP" && !cfg.HTTP.Public {
			t.Errorf("%s: public not loaded: %+v %+v", section, cfg.TCP, cfg.HTTP)
		}
	}
}

func TestAdminListener(t *testing.T) {
	tests := []struct {
		name string
		http HTTP
		ok   bool
	}{
		{"none", HTTP{Addr: "127.0.0.1:8080"}, true},
		{"loopback", HTTP{Addr: "127.0.0.1:8080", AdminAddr: "127.0.0.1:8081"}, true},
		{"the client listener's own", HTTP{Addr: "127.0.0.1:8080", AdminAddr: "127.0.0.1:8080"}, false},
		{"all interfaces", HTTP{Addr: "127.0.0.1:8080", AdminAddr: "0.0.0.0:8081"}, false},
		{"all interfaces on purpose", HTTP{Addr: "0.0.0.0:8080", AdminAddr: "0.0.0.0:8081", Public: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.http.validateAdmin(); (err == nil) != tt.ok {
				t.Fatalf("validateAdmin(%+v) = %v, want ok %v", tt.http, err, tt.ok)
			}
		})
	}
}
