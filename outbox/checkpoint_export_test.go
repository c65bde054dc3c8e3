package outbox

// SetCheckpointHook has f run before each checkpoint of o's Runs'
// checkpointers (checkpoint.go). Set it before Run.
func SetCheckpointHook(o *Outbox, f func()) { o.ckptBefore = f }
