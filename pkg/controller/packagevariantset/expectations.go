package packagevariantset

import "time"

// expectationTimeout is how long a set trusts that a variant it created
// will appear in the informer cache. Long enough for any sane watch delay;
// short enough that a variant deleted before the cache ever showed it (a
// relist can skip both events) is re-created soon.
const expectationTimeout = 2 * time.Minute
