package http

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/core/retention"
	"github.com/imdhq/imd/docs/openapicheck"
)

// req and res bind a handler type to a body of an operation in docs/openapi.yaml.
func req[T any](op string) openapicheck.Body { return openapicheck.Request[T](op) }

func res[T any](op string, statuses ...int) []openapicheck.Body {
	out := make([]openapicheck.Body, len(statuses))
	for i, st := range statuses {
		out[i] = openapicheck.Response[T](op, st)
	}
	return out
}

// adminBodies is the one mapping of the admin handlers' JSON types to docs/openapi.yaml: each
// request and success body of an operation under /admin/v1, and the error every route answers.
// struct{} is the empty object of calls that return nothing.
func adminBodies() []openapicheck.Body {
	bodies := []openapicheck.Body{
		openapicheck.Component[errorBody]("Error"),
		req[provisionRequest]("provisionTenant"),
		req[createUserRequest]("createUser"),
		req[issueTokenRequest]("issueToken"),
		req[friendshipRequest]("addFriendship"),
		req[createGroupRequest]("createGroup"),
		req[addMembersRequest]("adminAddMembers"),
		req[advanceRequest]("advanceMonth"),
		req[requeueRequest]("requeueDead"),
		req[reindexRequest]("runReindex"),
		req[migrationStartRequest]("startMigration"),
		req[dialogSettings]("setDialog"),
		req[blockRequest]("adminBlock"),
		req[roleRequest]("adminSetRole"),
		req[muteRequest]("adminMuteMember"),
		req[muteAllRequest]("adminSetMuteAll"),
		req[ownerRequest]("adminTransferOwnership"),
		req[revokeRequest]("revokeTokens"),
		req[reportStatusRequest]("setReportStatus"),
	}
	jobOps := []string{
		"adminPostShardsByMonthArchiveCheck", "adminPostShardsByMonthDrop", "adminPostShardsByMonthRestore",
		"adminPostShardsByMonthPurge", "runRetention", "runReindex",
	}
	for _, op := range jobOps {
		bodies = append(bodies, res[jobJSON](op, 200, 202)...)
	}
	migrationOps := []string{
		"startMigration", "adminPostMigrationPause", "adminPostMigrationResume", "adminPostMigrationVerify",
		"adminPostMigrationFinish",
	}
	for _, op := range migrationOps {
		bodies = append(bodies, res[migrationJobJSON](op, 200)...)
	}
	emptyOps := []string{
		"addFriendship", "adminAddMembers", "setDialog", "adminRemoveFriendship", "adminBlock", "adminUnblock",
		"adminRemoveMember", "adminSetRole", "adminMuteMember",
	}
	for _, op := range emptyOps {
		bodies = append(bodies, res[struct{}](op, 200)...)
	}
	for _, op := range []string{"listMessages", "messageContext", "searchMessages"} {
		bodies = append(bodies, res[messagesResponse](op, 200)...)
	}
	for _, op := range []string{"adminUserFriends", "adminUserBlocks"} {
		bodies = append(bodies, res[userIDsJSON](op, 200)...)
	}
	for _, rs := range [][]openapicheck.Body{
		res[deliveryJSON]("deliveryDepths", 200),
		res[nodesJSON]("listNodes", 200),
		res[requeuedJSON]("requeueDead", 200),
		res[repairBacklogJSON]("routeRepairBacklog", 200),
		res[repairedJSON]("drainRouteRepairs", 200),
		res[tenantsJSON]("listTenants", 200),
		res[tenantJSON]("provisionTenant", 200, 201),
		res[userIDBody]("createUser", 200),
		res[tokenJSON]("issueToken", 200),
		res[groupResponse]("createGroup", 200),
		res[membersJSON]("adminListMembers", 200),
		res[protocol.Message]("getMessage", 200),
		res[routeResponse]("rebuildRoute", 200),
		res[shardsJSON]("listShards", 200),
		res[activeMonthJSON]("advanceMonth", 200),
		res[archivedMonthJSON]("archiveMonth", 200, 202),
		res[manifestJSON]("archiveManifest", 200),
		res[jobJSON]("getJob", 200),
		res[retention.Plan]("retentionPlan", 200),
		res[searchJSON]("adminLongSearch", 200),
		res[routesRebuiltJSON]("rebuildTenantRoutes", 200),
		res[migrationPlanJSON]("migrationPlan", 200),
		res[migrationStatusJSON]("migrationStatus", 200),
		res[compensationResponse]("listCompensation", 200),
		res[rebuildDialogsResponse]("rebuildDialogs", 200),
		res[profileJSON]("adminGetUser", 200),
		res[conversationsJSON]("adminUserGroups", 200),
		res[groupInfoJSON]("adminGetGroup", 200),
		res[muteAllRequest]("adminSetMuteAll", 200),
		res[ownerJSON]("adminTransferOwnership", 200),
		res[revokedJSON]("revokeTokens", 200),
		res[statsJSON]("stats", 200),
		res[reportsJSON]("listReports", 200),
		res[reportStatusJSON]("setReportStatus", 200),
	} {
		bodies = append(bodies, rs...)
	}
	return bodies
}

// TestAdminTypesMatchOpenAPI holds every admin handler type to its schema in docs/openapi.yaml
// (field names, JSON types, required or optional, nesting), every admin body of the document to
// a handler type, and every JSON type of the admin_*.go files to a binding.
func TestAdminTypesMatchOpenAPI(t *testing.T) {
	spec, err := openapicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	bodies := adminBodies()
	for _, b := range bodies {
		for _, diff := range spec.Check(b) {
			t.Error(diff)
		}
	}
	if missing := spec.Unbound("/admin/v1", bodies); len(missing) > 0 {
		t.Errorf("admin bodies of docs/openapi.yaml without a Go type in adminBodies:\n  %s", strings.Join(missing, "\n  "))
	}
	files, err := filepath.Glob("admin*.go")
	if err != nil {
		t.Fatal(err)
	}
	unreached, err := openapicheck.Unreached(files, bodies)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unreached {
		t.Error(u)
	}
}
