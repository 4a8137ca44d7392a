"""Getting facts out of a store: store URLs, APP retrieval (KGFR eq. 6–7), entity linking, the
label index, the text encoder, and mapping an answer's words back to KG entities."""
