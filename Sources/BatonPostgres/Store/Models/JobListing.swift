import Baton
import Foundation

/// A page of jobs, and where the scan for it stopped when it stopped before the page was full.
package struct JobListing: Sendable {
    package var jobs: [JobSummary] = []
    /// The oldest job examined, when ``JobFilter/scanLimit`` jobs were: older ones may match too.
    package var scannedTo: Int64?
}
