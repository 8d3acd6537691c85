import sys

from .import_guard import take_working_folder_off

# before anything else is imported: nothing comes from a stray file in the working folder
take_working_folder_off()

from .cli import main  # noqa: E402

sys.exit(main())
