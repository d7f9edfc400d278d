package social

// Settings are a user's own choices about what others see of the user (issue 31). A later
// setting is a new field here and on the SETTINGS command, not a new command.
type Settings struct {
	HidePresence bool // others see the user offline, with no last_seen, and get no PRESENCE push
	HideReceipts bool // the user's reads are pushed to nobody and counted in no READ_STATE
}

// SettingsChange names the settings one request changes; a nil field stays as stored.
type SettingsChange struct {
	HidePresence *bool
	HideReceipts *bool
}

// With is s with c applied.
func (s Settings) With(c SettingsChange) Settings {
	if c.HidePresence != nil {
		s.HidePresence = *c.HidePresence
	}
	if c.HideReceipts != nil {
		s.HideReceipts = *c.HideReceipts
	}
	return s
}
