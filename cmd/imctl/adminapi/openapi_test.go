package adminapi

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/docs/openapicheck"
)

// clientBodies is the one mapping of this client's JSON types to docs/openapi.yaml: each body
// it sends or reads, and the error it reads from every route.
func clientBodies() []openapicheck.Body {
	bodies := []openapicheck.Body{
		openapicheck.Component[Error]("Error"),
		openapicheck.Request[createUserRequest]("createUser"),
		openapicheck.Request[tokenRequest]("issueToken"),
		openapicheck.Response[tokenAnswer]("issueToken", 200),
		openapicheck.Request[friendshipRequest]("addFriendship"),
		openapicheck.Request[createGroupRequest]("createGroup"),
		openapicheck.Response[Group]("createGroup", 200),
		openapicheck.Request[userIDs]("adminAddMembers"),
		openapicheck.Response[wire.Message]("getMessage", 200),
		openapicheck.Response[Page]("listMessages", 200),
		openapicheck.Response[shardsAnswer]("listShards", 200),
		openapicheck.Request[advanceRequest]("advanceMonth"),
		openapicheck.Response[activeMonthAnswer]("advanceMonth", 200),
		openapicheck.Response[Route]("rebuildRoute", 200),
		openapicheck.Response[monthArchive]("archiveMonth", 200),
		openapicheck.Response[monthArchive]("archiveMonth", 202),
		openapicheck.Response[Job]("getJob", 200),
		openapicheck.Request[reindexRequest]("runReindex"),
		openapicheck.Response[Manifest]("archiveManifest", 200),
		openapicheck.Response[json.RawMessage]("retentionPlan", 200),
		openapicheck.Response[MigrationPlan]("migrationPlan", 200),
		openapicheck.Response[MigrationStatus]("migrationStatus", 200),
		openapicheck.Request[migrationStartRequest]("startMigration"),
		openapicheck.Response[tenantsAnswer]("listTenants", 200),
		openapicheck.Request[provisionRequest]("provisionTenant"),
		openapicheck.Response[Tenant]("provisionTenant", 200),
		openapicheck.Response[Tenant]("provisionTenant", 201),
		openapicheck.Request[blockRequest]("adminBlock"),
		openapicheck.Response[userIDs]("adminUserBlocks", 200),
		openapicheck.Request[muteAllRequest]("adminSetMuteAll"),
		openapicheck.Request[muteRequest]("adminMuteMember"),
		openapicheck.Request[revokeRequest]("revokeTokens"),
		openapicheck.Response[revokeAnswer]("revokeTokens", 200),
		openapicheck.Response[Stats]("stats", 200),
		openapicheck.Request[ownerRequest]("adminTransferOwnership"),
		openapicheck.Request[userStatusRequest]("adminSetUserStatus"),
		openapicheck.Response[UserStatus]("adminUserStatus", 200),
		openapicheck.Response[UserStatus]("adminSetUserStatus", 200),
		openapicheck.Response[UserStatus]("adminDeleteUser", 200),
	}
	// MonthOp's other operations, retention and reindex answer with the job, done or running.
	for _, op := range []string{
		"adminPostShardsByMonthArchiveCheck", "adminPostShardsByMonthDrop", "adminPostShardsByMonthRestore",
		"adminPostShardsByMonthPurge", "runRetention", "runReindex",
	} {
		bodies = append(bodies, openapicheck.Response[Job](op, 200), openapicheck.Response[Job](op, 202))
	}
	for _, op := range []string{
		"startMigration", "adminPostMigrationPause", "adminPostMigrationResume", "adminPostMigrationVerify",
		"adminPostMigrationFinish",
	} {
		bodies = append(bodies, openapicheck.Response[MigrationJob](op, 200))
	}
	return bodies
}

// TestTypesMatchOpenAPI holds every type this client sends or reads to its schema in
// docs/openapi.yaml, and every JSON type of the package to a binding.
func TestTypesMatchOpenAPI(t *testing.T) {
	spec, err := openapicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := spec.Verify(clientBodies(), files)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
}
