package http

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/docs/openapicheck"
)

// req binds a handler type to the request body of an operation in docs/openapi.yaml, res to
// its answers with the statuses, each to the same answers of several operations.
func req[T any](op string) []openapicheck.Body {
	return []openapicheck.Body{openapicheck.Request[T](op)}
}

func res[T any](op string, statuses ...int) []openapicheck.Body {
	return each[T]([]string{op}, statuses...)
}

func each[T any](ops []string, statuses ...int) []openapicheck.Body {
	var out []openapicheck.Body
	for _, op := range ops {
		for _, st := range statuses {
			out = append(out, openapicheck.Response[T](op, st))
		}
	}
	return out
}

// adminBodies is the one mapping of the admin handlers' JSON types to docs/openapi.yaml: each
// request and success body of an operation under /admin/v1, and the error every route answers.
// struct{} is the empty object of calls that return nothing.
func adminBodies() []openapicheck.Body {
	jobOps := []string{
		"adminPostShardsByMonthArchiveCheck", "adminPostShardsByMonthDrop", "adminPostShardsByMonthRestore",
		"adminPostShardsByMonthPurge", "runRetention", "runReindex",
	}
	migrationOps := []string{
		"startMigration", "adminPostMigrationPause", "adminPostMigrationResume", "adminPostMigrationVerify",
		"adminPostMigrationFinish",
	}
	emptyOps := []string{
		"addFriendship", "adminAddMembers", "setDialog", "adminRemoveFriendship", "adminBlock", "adminUnblock",
		"adminRemoveMember", "adminSetRole", "adminMuteMember", "deleteWebhook", "replayWebhook", "deleteBot",
	}
	return slices.Concat(
		[]openapicheck.Body{openapicheck.Component[errorBody]("Error")},
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
		req[userStatusRequest]("adminSetUserStatus"),
		req[reportStatusRequest]("setReportStatus"),
		req[webhookRequest]("createWebhook"),
		req[webhookRequest]("updateWebhook"),
		req[replayRequest]("replayWebhook"),
		req[botRequest]("createBot"),
		each[jobJSON](jobOps, 200, 202),
		each[migrationJobJSON](migrationOps, 200),
		each[struct{}](emptyOps, 200),
		each[messagesResponse]([]string{"listMessages", "messageContext", "searchMessages"}, 200),
		each[userIDsJSON]([]string{"adminUserFriends", "adminUserBlocks"}, 200),
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
		res[wire.Message]("getMessage", 200),
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
		each[userStatusJSON]([]string{"adminUserStatus", "adminSetUserStatus", "adminDeleteUser"}, 200),
		res[conversationsJSON]("adminUserGroups", 200),
		res[groupInfoJSON]("adminGetGroup", 200),
		res[muteAllRequest]("adminSetMuteAll", 200),
		res[ownerJSON]("adminTransferOwnership", 200),
		res[revokedJSON]("revokeTokens", 200),
		res[statsJSON]("stats", 200),
		res[reportsJSON]("listReports", 200),
		res[reportStatusJSON]("setReportStatus", 200),
		res[webhooksJSON]("listWebhooks", 200),
		res[botsJSON]("listBots", 200),
		res[botJSON]("createBot", 200),
		res[tokenJSON]("botToken", 200),
		res[deadLettersJSON]("webhookDeadLetters", 200),
		res[pushDeadLettersJSON]("pushDeadLetters", 200),
		each[webhookJSON]([]string{"createWebhook", "getWebhook", "updateWebhook", "rotateWebhookSecret"}, 200),
	)
}

// TestAdminTypesMatchOpenAPI holds every admin handler type to its schema in docs/openapi.yaml
// (field names, JSON types, required or optional, nesting), every admin body of the document to
// a handler type, and every JSON type of the admin_*.go files to a binding.
func TestAdminTypesMatchOpenAPI(t *testing.T) {
	spec, err := openapicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("admin*.go")
	if err != nil {
		t.Fatal(err)
	}
	bodies := adminBodies()
	diffs, err := spec.Verify(bodies, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if missing := spec.Unbound("/admin/v1", bodies); len(missing) > 0 {
		t.Errorf("admin bodies of docs/openapi.yaml without a Go type in adminBodies:\n  %s", strings.Join(missing, "\n  "))
	}
}
