"""The Edit matching cascade (EDIT): exact, then the fallbacks, over prepared haystacks."""
