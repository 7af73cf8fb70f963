"""Every layout the tool reads or writes, as data (the files in schemas/), and the wire format they drive.

    field_spec a field of a layout: its name, type and version ranges
    spec       schemas/records, schemas/share_state and schemas/protocol parsed into field specs
    wire       Kafka's primitive encodings read from bytes, with errors a person can act on
    defaults   what a field holds when the bytes leave it out, as Kafka's message generator defines it
    compiler   field specs -> reader functions, built once per version
    codec      one coordinator record's key and value decoded by its layout
    encoder    records written in Kafka's wire format from the same layouts
    tables     the output tables' columns (schemas/tables), as Spark and as Arrow types

Adding a Kafka version means editing a schema file and adding its byte vectors, not writing a parser.

May import: the top-level modules.
"""
