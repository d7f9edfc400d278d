package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/docs"
)

// openAPI serves the checked-in OpenAPI document; a test keeps it in step with the routes.
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", docs.OpenAPI)
}
