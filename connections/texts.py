"""What a person is told on the way through a sign-in (the pages' texts, in one place)."""

LINK_INVALID = (
    "This sign-in link cannot be used: it was used already, it expired, or it never "
    "existed. Call the tool again for a new one."
)
LINK_OTHER_PERSON = (
    "This sign-in link was made for another person: it connects nobody's account but "
    "theirs. Sign in to Workbench as that person, or call the tool again as yourself."
)
NOT_A_MEMBER = "You are no longer a member of the tenant of server '{server}'."
NO_SIGN_IN = "Server '{server}' does not take a person's sign-in."
SHARED_ADMINS_ONLY = "Only the tenant's admins connect the shared account of server '{server}'."
STATE_INVALID = (
    "This sign-in cannot be finished: it was not started here, it was finished already, "
    "or it expired. Start again from the link your client gave."
)
STATE_OTHER_PERSON = (
    "This sign-in was started by another person: it connects nobody's account. "
    "Start your own from the link your client gave you."
)
REFUSED_AT_SERVER = "Signing in to '{server}' was refused at the server ({error})."
FAILED = "Signing in to '{server}' failed: {phrase}."
CONNECTED = (
    "Connected to '{server}'. Go back to your client: its next call to '{server}' uses "
    "this account."
)
