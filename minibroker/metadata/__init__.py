"""The cluster's metadata as the KRaft metadata log describes it, shared by the controller and the
brokers: partition registrations, the immutable image and the delta that replays records onto it,
and the broker's loader that follows the log (issue 29)."""
