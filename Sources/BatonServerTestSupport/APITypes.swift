import BatonAPI

// The control plane's types, as the tests read answers with them.
package typealias JobView = Components.Schemas.Job
package typealias JobPage = Components.Schemas.JobPage
package typealias LanePage = Components.Schemas.LanePage
package typealias QueueList = Components.Schemas.QueueList
package typealias QueuePauseState = Components.Schemas.QueuePause
package typealias WorkerList = Components.Schemas.WorkerList
