"""Where tables leave the job, and how the job reads them back.

    read_back       a Delta table this project wrote, read back as a DataFrame

May import: the top-level modules, layouts, inputs, decoding.
"""
