package redis

// Keys of the shard lifecycle's background work (DESIGN §3: route repair queue, dead-letter
// lists). Like every key, they carry the tenant's hash tag.

// RouteRepair is the HASH topic → ticket version of topics waiting for a route rebuild.
func (k Keys) RouteRepair() string { return k.prefix + "groupmsg:route_repair" }

// RouteRepairVersion is the counter that numbers route repair tickets; versions are unique
// across the tenant, so a ticket finished late never matches a newer one of the same topic.
func (k Keys) RouteRepairVersion() string { return k.prefix + "groupmsg:route_repair_version" }

// RoutesBuilt marks that the tenant's routes were rebuilt from the MySQL mirror; Redis loses it
// together with the routes.
func (k Keys) RoutesBuilt() string { return k.prefix + "groupmsg:routes_built" }

// Compensation is the LIST of late writes refused by a sealed month, as JSON (seed 000 §5.3).
func (k Keys) Compensation() string { return k.prefix + "groupmsg:compensation" }

// CompensationIDs is the SET of msg_ids on the compensation list, so a retried write is
// listed once.
func (k Keys) CompensationIDs() string { return k.prefix + "groupmsg:compensation_ids" }

// Lock is the STRING lease of one named lock.
func (k Keys) Lock(name string) string { return k.prefix + "lock:" + name }
