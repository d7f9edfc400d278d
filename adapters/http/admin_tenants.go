package http

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/tenant"
)

// tenantRoutes are the tenant registry routes of the admin API: not under a tenant's path, so
// they carry the admin key check themselves.
func (s *Server) tenantRoutes(e *echo.Echo) {
	e.GET("/admin/v1/tenants", s.listTenants, s.requireAdminKey)
	e.POST("/admin/v1/tenants", s.provisionTenant, s.requireAdminKey)
}

type tenantJSON struct {
	Tenant    string `json:"tenant"`
	Database  string `json:"database"`
	DSN       string `json:"dsn,omitempty"`       // the tenant's own server, password masked; absent on the default server
	Source    string `json:"source"`              // config | provisioned
	CreatedAt int64  `json:"created_at,omitzero"` // Unix ms; absent for configured tenants
}

type tenantsJSON struct {
	Tenants []tenantJSON `json:"tenants"`
}

func newTenantJSON(t tenant.Info) tenantJSON {
	return tenantJSON{Tenant: t.Name, Database: t.Database, DSN: maskPassword(t.DSN), Source: string(t.Source), CreatedAt: unixMilli(t.CreatedAt)}
}

// maskPassword hides the password of a go-sql-driver DSN, [user[:password]@]…/[db][?params]:
// the user part ends at the last '@' before the last '/', the password starts at its first ':'.
func maskPassword(dsn string) string {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		slash = len(dsn)
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	if at < 0 {
		return dsn
	}
	colon := strings.IndexByte(dsn[:at], ':')
	if colon < 0 {
		return dsn
	}
	return dsn[:colon+1] + "********" + dsn[at:]
}

func (s *Server) listTenants(c echo.Context) error {
	list := s.d.Social.Tenants.List()
	out := make([]tenantJSON, len(list))
	for i, t := range list {
		out[i] = newTenantJSON(t)
	}
	return c.JSON(http.StatusOK, tenantsJSON{Tenants: out})
}

type provisionRequest struct {
	Tenant   string `json:"tenant"`
	Database string `json:"database,omitempty"` // default imd_<tenant>
	DSN      string `json:"dsn,omitempty"`      // the MySQL server holding the database, else the default
}

// provisionTenant creates a tenant: database, schema, first month tables, workers; 201 when
// it was created, 200 when it existed with the same database.
func (s *Server) provisionTenant(c echo.Context) error {
	var req provisionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	t, created, err := s.d.Social.Tenants.Provision(c.Request().Context(), req.Tenant, req.Database, req.DSN)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, newTenantJSON(t))
}
