package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/tenant"
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
	Source    string `json:"source"`              // config | provisioned
	CreatedAt int64  `json:"created_at,omitzero"` // Unix ms; absent for configured tenants
}

func newTenantJSON(t tenant.Info) tenantJSON {
	return tenantJSON{Tenant: t.Name, Database: t.Database, Source: string(t.Source), CreatedAt: unixMilli(t.CreatedAt)}
}

func (s *Server) listTenants(c echo.Context) error {
	list := s.d.Social.Tenants.List()
	out := make([]tenantJSON, len(list))
	for i, t := range list {
		out[i] = newTenantJSON(t)
	}
	return c.JSON(http.StatusOK, map[string][]tenantJSON{"tenants": out})
}

type provisionRequest struct {
	Tenant   string `json:"tenant"`
	Database string `json:"database"` // optional: imd_<tenant>
}

// provisionTenant creates a tenant: database, schema, first month tables, workers; 201 when
// it was created, 200 when it existed with the same database.
func (s *Server) provisionTenant(c echo.Context) error {
	var req provisionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	t, created, err := s.d.Social.Tenants.Provision(c.Request().Context(), req.Tenant, req.Database)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, newTenantJSON(t))
}
